from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evalsets", "0017_resolving_lease"),
    ]

    operations = [
        migrations.AddField(
            model_name="release",
            name="interruptions",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
